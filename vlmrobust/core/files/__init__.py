"""Files a command reads or writes safely: atomic writes, bounded reads of untrusted
files, folder swaps, owned-folder marks and the output guard."""
