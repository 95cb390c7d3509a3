"""One view module per page of the site: what the page shows, as frozen records."""
