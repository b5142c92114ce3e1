from shop.contracts.cli import app

app(prog_name="python -m shop.contracts")
