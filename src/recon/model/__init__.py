"""The product's vocabulary, shared by every engine and store: the verdicts
(``verdicts``), the words of their details (``details``) and the shapes of the inputs and
results (``schemas``)."""
