"""Bundle-protocol scenarios in tern_sim: prints how many random seeds ran."""
import simhelp


def pytest_terminal_summary(terminalreporter):
    t = simhelp.SEED_TOTALS
    if t["seeds"]:
        terminalreporter.write_line(
            f"tern_sim random scenarios: {t['seeds']} seeds, {t['bundles']} bundles: "
            f"{t['delivered']} delivered exactly once and intact, {t['expired']} expired "
            f"with a deletion report")
