from shop.notification.cli import app

app()
