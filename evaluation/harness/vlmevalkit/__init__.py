"""The VLMEvalKit bridge: a built dataset as VLMEvalKit's MCQ TSV, and its result
file (.tsv, .jsonl, .xlsx) read back, bounded, as predictions."""
