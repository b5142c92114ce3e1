from shop.payment.cli import app

app()
