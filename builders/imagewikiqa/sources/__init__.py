"""Where a class's text comes from: offline knowledge, Wikipedia, and the sentences made
of them."""
