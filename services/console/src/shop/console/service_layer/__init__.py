"""What the console runs on an operator's behalf beyond one request."""
