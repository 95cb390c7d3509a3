"""Hand-written SVG charts of the site."""
