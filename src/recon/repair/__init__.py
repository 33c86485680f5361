"""Repair: from a run's wrong messages to a plan that fixes them, applied and verified.

* :mod:`recon.repair.planner`: ``make_plan``: replays for ``lost``, sink deletes by primary key
  for ``duplicated`` (all rows but the first), ``phantom`` and ``aborted_read``, and the sink
  state the plan was made against;
* :mod:`recon.repair.plan_model`: the plan as data and as its JSON file (no credentials);
* :mod:`recon.repair.applier`: ``apply_plan``: the deletes in one sink transaction, then the
  replays, each step safe to run again after a crash;
* :mod:`recon.repair.trust`: what an apply checks first: the plan as recorded, against the run's
  results and the catalog, one apply at a time, its deletes within the pipeline's bound;
* :mod:`recon.repair.verify`: ``verify_repairs``: after each run, applied plans become
  ``verified`` or ``failed``;
* :mod:`recon.repair.sink_rows` and :mod:`recon.repair.replay`: the sink and Kafka sides;
* :mod:`recon.repair.commands`: ``recon repair plan|apply|list``.

Plans and their state are kept in ``recon.repairs`` (:mod:`recon.store.repairs`).
"""
