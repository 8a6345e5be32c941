"""The table contracts (``hcat_pipeline.contracts``) as asset checks: one ``contract`` check per stored table, on its
asset and its partitions, blocking (a table that breaks its contract stops what reads it) — the UI's Checks tab.

``contract_checks(assets)`` builds them for the assets ``definitions.py`` collects; the check reads the stored table
through the IO manager and reports every problem (missing or mistyped column, duplicated key, null where none is allowed).
"""

import dagster as dg
import polars as pl

from hcat_pipeline.console import CONTRACT_CHECK
from hcat_pipeline.contracts import CONTRACTS, Contract, contract_problems


def _check(key: dg.AssetKey, contract: Contract, partitions_def) -> dg.AssetChecksDefinition:
    described = ", ".join(f"{c}: {t}" for c, t in contract.columns.items())
    @dg.asset_check(asset=key, name=CONTRACT_CHECK, blocking=True, partitions_def=partitions_def,
                    description=f"columns and dtypes ({described}); key {list(contract.key) or 'none'}; "
                    f"never null: {list(dict.fromkeys((*contract.key, *contract.not_null))) or 'none'}")  # fmt: skip
    def _contract(table: pl.DataFrame) -> dg.AssetCheckResult:
        problems = contract_problems(table, contract)
        return dg.AssetCheckResult(passed=not problems, severity=dg.AssetCheckSeverity.ERROR,
                                   metadata={"rows": table.height, "problems": dg.MetadataValue.json(problems)})  # fmt: skip

    return _contract


def contract_checks(assets) -> list[dg.AssetChecksDefinition]:
    """A ``contract`` check for every materializable asset with a contract."""
    checks = []
    for a in assets:
        if not isinstance(a, dg.AssetsDefinition) or not a.is_materializable:
            continue
        for spec in a.specs:
            contract = CONTRACTS.get(spec.key.to_user_string())
            if contract is not None:
                checks.append(_check(spec.key, contract, spec.partitions_def))
    return checks
