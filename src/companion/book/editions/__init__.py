"""The book's other editions: Colab notebooks, the student edition with its solutions removed, and the lecture slides."""
