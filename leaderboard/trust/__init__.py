"""What the leaderboard believes and why: re-scoring (verify), reference runs,
baselines, provenance and evidence."""
