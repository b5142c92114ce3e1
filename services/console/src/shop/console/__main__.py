from shop.console.cli import app

app()
