"""A run and what it leaves: its steps (``steps``: snapshot, read, reconcile, validate),
its outcome (``outcome``), its id's rule (``ids``), its files (``paths``) and the services it
talks to (``services``)."""
