#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){char p[4096];snprintf(p,sizeof p,"%s/willitscale.file",argv[1]);
 int n=atoi(argv[2]);close(open(p,O_CREAT|O_RDWR,0600));
 double t0=now();for(int i=0;i<n;i++){int fd=open(p,O_RDWR);if(fd<0){perror("open");return 1;}close(fd);}
 double t=now()-t0;
 double t1=now();for(int i=0;i<n;i++){close(-1);} double tk=now()-t1;
 printf("%s: %.0f open+close/s (%.1f ns per pair); close(-1) %.1f ns\n",argv[1],n/t,t/n*1e9,tk/n*1e9);unlink(p);return 0;}
