from shop.messaging.asyncapi.cli import app

app(prog_name="python -m shop.messaging.asyncapi")
