"""``shopctl``, the operators' command line (:mod:`shop.console.shopctl.app`): one module per
group of commands, each a thin layer over :mod:`shop.ops`."""
