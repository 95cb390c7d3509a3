"""ImageNet-variant multiple-choice questions with cleaned labels and three
distractor strategies (random, wordnet, visual). Entry point: ``build.build``."""
