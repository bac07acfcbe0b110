"""What a learner sees: Markdown tables, figures, slider panels, the capstone ladder. Every view
draws what an instrument of helpers.measure computed. Imports measure and below."""
