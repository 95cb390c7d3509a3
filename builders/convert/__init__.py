"""`vlmrobust convert`: a multiple-choice benchmark in a published layout
(VLMEvalKit TSV, a Hugging Face parquet snapshot, or any table through a YAML
column mapping) -> a vlmrobust MCQ dataset directory. Entry point:
``mcq.convert``."""
