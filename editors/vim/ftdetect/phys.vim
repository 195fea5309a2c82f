" physc .phys files
autocmd BufRead,BufNewFile *.phys setfiletype phys
