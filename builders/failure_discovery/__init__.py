"""The failure-discovery family: what ``vlmrobust discover`` found, as a dataset
(an ``open`` config of every question slot with its verdicts, and an ``mcq``
config derived from the verified failures)."""
