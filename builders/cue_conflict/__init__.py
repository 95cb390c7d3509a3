"""The cue-conflict family (Geirhos et al. 2019; seed 001's shape-bias axis):
kind ``classification`` over the 16 entry-level categories of model-vs-human."""
