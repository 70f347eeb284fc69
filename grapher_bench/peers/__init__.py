"""Other systems run by the bench beside GraphER: expansion, graph-retriever, prev-next."""
