"""Renderings of a `Log`: the offline HTML explorer page (`views.html`)."""
