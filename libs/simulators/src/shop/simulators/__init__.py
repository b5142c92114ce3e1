"""Stand-ins for the parties outside the shop, each written from the other side of its
interface and sharing no code with the shop's side of it: the identity provider that issues
customer tokens (:mod:`shop.simulators.identity`), the payment gateway that signs and sends
notifications (:mod:`shop.simulators.gateway`), and the faults of an e-mail provider on a bad
day (:mod:`shop.simulators.mail`), which the development SMTP sink applies.

Light on purpose (no embedded infrastructure): ``shopctl`` and the console use them, and
they ship in the shop's image, which :mod:`shop.devstack` does not.
"""
