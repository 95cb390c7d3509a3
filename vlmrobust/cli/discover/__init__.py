"""The discover command's GRPO training and taxonomy subcommands."""
