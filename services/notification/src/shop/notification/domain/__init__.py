"""Pure rules of the order e-mails: their kinds, how money and moments read, the words of
each e-mail (rendering.py, from ``templates/``), the invoice PDF, and every domain error
(errors.py). No I/O here."""
