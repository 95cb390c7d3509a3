"""The demo command's stages beyond the pipeline itself: failure discovery and the ledger of
what it wrote."""
