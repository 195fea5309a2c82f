/* view_video.h — `physc view --mp4 FILE`: the page's scene as a video for slides, each frame
   drawn by the page itself in headless Chromium (Debian's chromium) and encoded to H.264 MP4
   by Debian's ffmpeg (view_video.c). */
#ifndef PHYSC_VIEW_VIDEO_H
#define PHYSC_VIEW_VIDEO_H
#include <stdbool.h>
#include <stddef.h>

typedef struct ViewVideo {
    const char *page;   /* the page physc view wrote */
    const char *out;    /* the video, written whole or not at all */
    long traj;          /* the test trajectory shown */
    const char *layout; /* "overlay" (the truth a ghost) or "side" */
    long times;         /* its frames: the observation times */
    long fps;           /* frames a second */
    long width, height; /* of a frame, in pixels */
    bool quiet;
} ViewVideo;

/* 0, or -1 with a message (the tools missing, Chromium stuck or failing, ffmpeg failing) */
int view_write_mp4(const ViewVideo *v, char *err, size_t errlen);

#endif
