"""gpuyield: share one GPU between inference processes of different priority."""
