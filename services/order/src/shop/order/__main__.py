from shop.order.cli import app

app()
