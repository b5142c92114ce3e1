from shop.ops.cli import app

app(prog_name="python -m shop.ops")
