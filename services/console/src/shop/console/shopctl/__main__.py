from shop.console.shopctl.app import app

app(prog_name="python -m shop.console.shopctl")
