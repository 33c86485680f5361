"""The engines that run the rules (``recon.rules``): DuckDB on one machine, Spark anywhere.

Each is a small adapter behind ``recon.rules.run.RuleEngine``: it registers the run's inputs
under the rules' names, runs each rule statement, and hands its outputs on.
"""
