"""The built site: rendering, downloads, releases, the site check and publishing."""
