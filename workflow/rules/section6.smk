# Section 6 process of Cebere et al. (fig3, fig6b, fig6c, fig10, fig14): simulate -> audit -> plot.
