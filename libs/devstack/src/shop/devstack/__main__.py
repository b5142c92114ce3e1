from shop.devstack.cli import app

app(prog_name="python -m shop.devstack")
