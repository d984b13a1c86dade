"""A certification's verdict: the model built once (report), rendered for the console, report.md
and report.json by rendering alone, the commands that replay a counterexample (reproduction), its
badge (badge) and the certifications' matrix (matrix).

Imports findings/, block/ and benefit/, never the run (certify, job, campaign) that builds what
it renders (tests/test_layers.py)."""
