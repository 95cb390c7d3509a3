"""Accuracy on the line: effective robustness, the robust line fits, ImageNet-X
factor accuracies and factor ER, error gaps, perturbation sets."""
