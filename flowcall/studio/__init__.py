"""The Streamlit studio: the pages' code, the canvas component and what only the studio uses."""
