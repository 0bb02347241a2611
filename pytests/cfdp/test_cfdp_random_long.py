"""The long mode of the CFDP random scenarios (issue 19): 20,000 seeds of
cfdp_test_entity_sim (the default run, in make test's unit suite, takes
1,000). Class 2 must end intact or with a limit fault, class 1 never claim
success on a damaged file; the C test checks each seed, this checks it ran
them all and prints its totals."""
import os
import re
import subprocess

import pytest

from tern.testing import bin_dir


@pytest.mark.long
def test_cfdp_random_scenarios_20000_seeds():
    prog = os.path.join(os.path.dirname(bin_dir()), "tests", "cfdp_test_entity_sim")
    env = dict(os.environ, TERN_CFDP_SEEDS="20000")
    r = subprocess.run([prog], env=env, capture_output=True, text=True, timeout=1800)
    print(r.stdout[-2000:])
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    m = re.search(r"cfdp random scenarios: (\d+) seeds", r.stdout)
    assert m and int(m.group(1)) == 20000, r.stdout[-2000:]
