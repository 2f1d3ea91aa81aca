"""Fleet: many Darshan logs -> one Parquet store (`build`) -> one offline page (`report`)."""
