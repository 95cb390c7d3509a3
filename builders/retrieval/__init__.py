"""The retrieval family: Flickr30K and MSCOCO 5k test (Karpathy splits), kind ``retrieval``."""
