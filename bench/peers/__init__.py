"""The peer benchmark: Trainyard beside Slurm and Ray Jobs (make bench; see bench/README.md)."""
