"""The contract: which verdicts each claimed delivery semantic allows, and a run judged by it.

* :mod:`recon.contract.table` holds the contract as one table
  (:data:`~recon.contract.table.CONTRACT`), the one source of everything that decides by it;
* :mod:`recon.contract.evaluate` judges a run's verdict counts by that table, in plain Python
  (:func:`~recon.contract.evaluate.evaluate_contract`). The Great Expectations suites of
  ``recon.validation`` are generated from the same table, so both decide alike.
"""
