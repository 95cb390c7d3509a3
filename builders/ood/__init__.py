"""The ood family: ImageNet val (ID) and OOD sets in their published layouts (kind ood)."""
