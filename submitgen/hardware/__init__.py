"""Processor facts (``processors``) and occupancy, per GPU target."""
