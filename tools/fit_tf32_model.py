"""The TF32 dispatcher's model constants fitted again to the committed library sweep (helpers/measure/tf32_fit.py),
beside those helpers/run/dispatch_tf32.py holds, and each timed call's measured and modelled times.

    python -m tools.fit_tf32_model [SWEEP_JSON]
"""

from __future__ import annotations

import argparse

from helpers.measure import tf32_fit
from helpers.run import dispatch_tf32


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.fit_tf32_model", description=__doc__.split("\n\n")[0])
    p.add_argument("sweep", nargs="?", default=dispatch_tf32.SWEEP_FILE, help=f"default {dispatch_tf32.SWEEP_FILE}")
    args = p.parse_args(argv)
    constants, calls = tf32_fit.fit(args.sweep)
    print(f"fitted to {args.sweep} ({len(calls)} TF32 calls):")
    for name, value in constants.items():
        print(f"  {name:16} fitted {value:.4g}   in dispatch_tf32: {getattr(dispatch_tf32, name):.4g}")
    print(f"{'shape':>18} beta  {'config':42} {'measured us':>11} {'modelled us':>11} {'ratio':>6}")
    for c in calls:
        mod = tf32_fit.modelled_ms(c, constants)
        print(f"{f'{c.M}x{c.N}x{c.K}':>18} {int(c.beta_nonzero):>4}  {c.config.label():42} {c.measured_ms * 1e3:>11.1f} "
              f"{mod * 1e3:>11.1f} {c.measured_ms / mod:>6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
