"""The fault suite: scenarios that run real servers and real jobs under crashes and outages,
then check every job (lost, duplicated, stuck, wrong final state). `python -m chaos`."""
