"""Campaigns and measurements run by the make targets; not part of the installed package."""
