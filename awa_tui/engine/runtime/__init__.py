"""One runtime process: its loops, leader election, leader duties, snapshots, worker."""
