"""The stack's checks: the services a pipeline names answer (``check``), a pipeline's
declaration holds against them (``preflight``), and the smoke pipeline ``make demo`` runs
(``smoke``)."""
