"""fx-katas: the katas (folders NN_slug, not importable) and `katas.common`, what they share."""
